-- Every target the report knows: configured ones and ones first seen in a bundle, with run counts.
with seen as (
    select target, count(*) as runs, min(started_at) as first_run_at, max(started_at) as last_run_at,
           count(*) filter (where status = 'ok') as runs_ok
    from runs
    group by target
),
named as (
    select target from targets
    union
    select target from seen
),
final as (
    select n.target, t.provider, t.region, t.instance_type, t.gpu_model, t.gpu_count, t.billing_mode,
           t.dispatch, coalesce(s.runs, 0) as runs, coalesce(s.runs_ok, 0) as runs_ok,
           s.first_run_at, s.last_run_at
    from named n
    left join targets t using (target)
    left join seen s using (target)
)
select * from final order by target
