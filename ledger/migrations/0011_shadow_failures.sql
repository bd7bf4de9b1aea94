-- A shadow reply that is a terminal business failure ({"error": "..."}, outcome_kind business in
-- the ledger) is a class of its own, not a result compared with the original: "failed" when the
-- original succeeded or there is none, "failed_again" when the original failed too (issue 14).
alter table job_targets drop constraint if exists job_targets_shadow_comparison_check;
alter table job_targets add constraint job_targets_shadow_comparison_check
    check (shadow_comparison in ('identical', 'changed', 'no_original', 'failed', 'failed_again'));
