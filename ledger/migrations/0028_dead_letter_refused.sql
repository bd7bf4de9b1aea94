-- A dead letter the DLQ stream refused (full, with discard new): the event was neither handled
-- nor dead-lettered, and is redelivered until the DLQ takes it. Counted by ledger stats.
alter table effect_incidents drop constraint effect_incidents_kind_check;
alter table effect_incidents add constraint effect_incidents_kind_check
    check (kind in ('payload_conflict', 'lease_lapsed', 'dead_letter_refused'));
