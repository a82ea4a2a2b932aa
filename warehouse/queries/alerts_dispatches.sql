-- alerts_dispatches: each target's outcome in each compare run, oldest first; failure streaks are read
-- from it (tasks/alerts/decide.py failure_streaks). `ended_at` is when the target's dispatch ended.
with d as (
    select target, compare_run_id, status, message, coalesce(finished_at, started_at, recorded_at) as ended_at
    from dispatches
),
final as (
    select * from d order by target, ended_at, compare_run_id
)
select * from final
