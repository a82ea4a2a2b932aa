-- cost_history: C per (target, preset, bucket) from _cost_runs (cost_runs.sql), each bucket its own window.
-- Same model as tasks/cost.py: P mean as-of price, X median tokens/s, p from fine-tune attempts, R, C.
-- price_stale: some run in the bucket was priced by a price last confirmed > $stale_days before it ran.
with runs_b as (
    select target, preset, date_trunc($bucket, started_at) as bucket_start, tokens_per_s, price_per_hour,
           epoch(started_at) - epoch(price_last_seen_at) > $stale_days * 86400.0 as stale
    from _cost_runs
),
agg as (
    select target, preset, bucket_start, count(*) as runs, median(tokens_per_s) as tokens_per_s,
           avg(price_per_hour) as price_per_hour, bool_or(stale) as price_stale
    from runs_b
    group by target, preset, bucket_start
),
att as (
    -- an attempt's time is its own started_at, else its run's (bundle attempts may not carry one)
    select a.target, date_trunc($bucket, a.started_at) as bucket_start, a.state
    from attempts a
    where a.task = $task and a.started_at > $start and a.started_at <= $end
      and a.state not in ('skipped', 'not_applicable', 'cancelled')
    union all
    select a.target, date_trunc($bucket, w.started_at) as bucket_start, a.state
    from attempts a
    join (select run_id, started_at from runs where started_at > $start and started_at <= $end) w using (run_id)
    where a.task = $task and a.started_at is null
      and a.state not in ('skipped', 'not_applicable', 'cancelled')
),
rel as (
    select target, bucket_start, count(*) as attempts,
           count(*) filter (where state in ('failed', 'crashed')) as failed_attempts
    from att
    group by target, bucket_start
),
joined as (
    select agg.*, coalesce(rel.attempts, 0) as attempts, coalesce(rel.failed_attempts, 0) as failed_attempts,
           case when coalesce(rel.attempts, 0) = 0 then 0.0
                else rel.failed_attempts / rel.attempts end as p
    from agg
    left join rel using (target, bucket_start)
),
final as (
    select target, preset, bucket_start, runs, price_per_hour, price_stale, tokens_per_s, attempts, failed_attempts, p,
           case when p < 1 then 1 + $f * p / (1 - p) end as R,
           price_per_hour / (3600.0 * tokens_per_s) * 1e6 * (case when p < 1 then 1 + $f * p / (1 - p) end)
               as cost_per_mtok
    from joined
    order by target, preset, bucket_start
)
select * from final
