-- Every target the report knows: configured ones and ones first seen in a bundle, with run counts
-- and how many of its runs are labelled as not measured (provenance, e.g. the demo's history).
with labelled as (
    select key as run_id, label from provenance where scope = 'run'
),
seen as (
    select r.target, count(*) as runs, min(r.started_at) as first_run_at, max(r.started_at) as last_run_at,
           count(*) filter (where r.status = 'ok') as runs_ok, count(l.run_id) as runs_labelled
    from runs r
    left join labelled l using (run_id)
    group by r.target
),
named as (
    select target from targets
    union
    select target from seen
),
final as (
    select n.target, t.provider, t.region, t.instance_type, t.gpu_model, t.gpu_count, t.billing_mode,
           t.dispatch, coalesce(s.runs, 0) as runs, coalesce(s.runs_ok, 0) as runs_ok,
           coalesce(s.runs_labelled, 0) as runs_labelled, s.first_run_at, s.last_run_at
    from named n
    left join targets t using (target)
    left join seen s using (target)
)
select * from final order by target
