-- Approvals that prove who approved (issue 41). An approval or rejection may carry an SSH
-- signature (OpenSSH SSHSIG, namespace replayctl-approval) over its canonical statement
-- (approval.Statement); a consumer's policy may name its approvers by key in allowed_signers
-- format, and then only decisions whose signature verifies for a listed principal count. A plan
-- may carry its planner's signature over the job and manifest digest (namespace
-- replayctl-manifest), so "not the planner" compares keys. Signatures are verified by replayctl
-- when it reads them, never trusted from a column: a row edited by hand fails verification.
alter table approvals
    add column signature  text,
    add column signer_key text;

alter table approval_policies
    add column allowed_signers     text,
    add column require_signed_plan boolean not null default false;

alter table jobs
    add column plan_signature text;
