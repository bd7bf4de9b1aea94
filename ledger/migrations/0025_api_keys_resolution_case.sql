-- The JSON contract (docs/contract.md) writes every enum value in snake_case, as the ledger's
-- other states are: an API record's resolution not-happened becomes not_happened.
alter table api_keys drop constraint api_keys_resolution_check;
update api_keys set resolution = 'not_happened' where resolution = 'not-happened';
alter table api_keys add constraint api_keys_resolution_check check (resolution in ('happened', 'not_happened'));
