-- finetune_attempts, revised: an attempt counts in the window of its run. attempted_at is now the
-- run's start (the time every other input of that run is dated by: its price as of the run, its
-- tokens/s), else the attempt's own start (a failed probe process left no run). Before (055) the
-- attempt's own start came first, and since a window ends at the newest run's start, the newest
-- run's fine-tune attempts (which start seconds after their run) fell outside the default window:
-- a first `costgap run` showed 0 attempts for a run that had fine-tuned.
-- The rest is 055's rule, unchanged:
--   'finetune' (the whole step) counts for every preset of the target (preset is null);
--   'finetune:<preset>' counts for that preset only ('finetune_ddp:*' multi-GPU tries are kept apart);
--   a Prefect probe process ('probe_child') that failed or crashed is a failed attempt for every preset;
--   skipped / not_applicable / cancelled are not attempts at the work.
create or replace view finetune_attempts as
with counted as (
    select a.target, a.task, a.state, a.error_kind, a.message, a.run_id,
           coalesce(r.started_at, a.started_at) as attempted_at,
           case when starts_with(a.task, 'finetune:') then substr(a.task, length('finetune:') + 1) end as preset
    from attempts a
    left join runs r using (run_id)
    where (a.task = 'finetune' or starts_with(a.task, 'finetune:')
           or (a.source = 'prefect' and a.task = 'probe_child' and a.state in ('failed', 'crashed')))
      and a.state not in ('skipped', 'not_applicable', 'cancelled')
)
select target, preset, state, state in ('failed', 'crashed') as failed,
       case when state in ('failed', 'crashed') then coalesce(error_kind, 'other') end as error_kind,
       task, message, run_id, attempted_at
from counted;
