-- finetune_attempts: the one rule for which attempts count towards the fine-tune failure rate p that
-- enters the rerun factor R (tasks/cost/model.py). Read by cost_inputs.sql (p = k/n per window) and by
-- the report's failure-kind rates, so the two can never count differently.
--   'finetune' (the whole step) counts for every preset of the target (preset is null);
--   'finetune:<preset>' counts for that preset only ('finetune_ddp:*' multi-GPU tries are kept apart);
--   a Prefect probe process ('probe_child') that failed or crashed left no bundle to say so: it is a
--   failed attempt for every preset;
--   skipped / not_applicable / cancelled are not attempts at the work.
-- attempted_at is the attempt's own start, else its run's (bundle attempts may not carry one).
create view finetune_attempts as
with counted as (
    select a.target, a.task, a.state, a.error_kind, a.message, a.run_id,
           coalesce(a.started_at, r.started_at) as attempted_at,
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
