-- Attempts per target and week since $since, split by outcome (completed, or the failure kind).
with a as (
    select a.target, date_trunc('week', coalesce(a.started_at, r.started_at)) as week,
           case when a.state in ('failed', 'crashed') then coalesce(a.error_kind, 'other')
                else a.state end as outcome,
           a.state in ('failed', 'crashed') as failed
    from attempts a
    left join runs r using (run_id)
    where a.state not in ('skipped', 'not_applicable')
),
final as (
    select target, week, outcome, count(*) as attempts, bool_or(failed) as failed
    from a
    where week is not null and week >= $since
    group by target, week, outcome
)
select * from final order by target, week, outcome
