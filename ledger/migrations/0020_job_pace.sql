-- A job's pace: the publish rate (per second, 0 for no limit) and the in-flight cap its executor
-- keeps to. execute records the ones it starts with, `replayctl pace` changes them while it runs,
-- and the executor reads them with the job at every poll. NULL until a run or a pace sets them.
alter table jobs
    add column pace_rate          double precision check (pace_rate >= 0),
    add column pace_max_in_flight integer          check (pace_max_in_flight >= 1);
