-- cost_history: C per (target, preset, bucket) from _cost_runs (cost_runs.sql), each bucket its own window.
-- Same model as tasks/cost/table.py: P mean as-of price, X median tokens/s, p from fine-tune attempts, R, C.
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
counted as (
    -- Fine-tune attempts: 'finetune' (the whole step) counts for every preset of the target,
    -- 'finetune:<preset>' for that preset only ('finetune_ddp:*' multi-GPU tries are kept apart); a
    -- Prefect probe process that failed or crashed ($prefect_task: no bundle survived to say so) is a
    -- failed attempt for every preset. skipped / not_applicable / cancelled are not attempts at the work.
    select target, state, started_at, run_id,
           case when starts_with(task, $task || ':') then substr(task, length($task) + 2) end as preset
    from attempts
    where (task = $task or starts_with(task, $task || ':')
           or (source = 'prefect' and task = $prefect_task and state in ('failed', 'crashed')))
      and state not in ('skipped', 'not_applicable', 'cancelled')
),
att as (
    -- an attempt's time is its own started_at, else its run's (bundle attempts may not carry one)
    select c.target, c.preset, c.state, date_trunc($bucket, c.started_at) as bucket_start
    from counted c
    where c.started_at > $start and c.started_at <= $end
    union all
    select c.target, c.preset, c.state, date_trunc($bucket, w.started_at) as bucket_start
    from counted c
    join (select run_id, started_at from runs where started_at > $start and started_at <= $end) w using (run_id)
    where c.started_at is null
),
rel_preset as (
    select target, preset, bucket_start, count(*) as attempts,
           count(*) filter (where state in ('failed', 'crashed')) as failed_attempts
    from att
    where preset is not null
    group by target, preset, bucket_start
),
rel_all as (
    select target, bucket_start, count(*) as attempts,
           count(*) filter (where state in ('failed', 'crashed')) as failed_attempts
    from att
    where preset is null
    group by target, bucket_start
),
joined as (
    select agg.*,
           coalesce(rp.attempts, 0) + coalesce(ra.attempts, 0) as attempts,
           coalesce(rp.failed_attempts, 0) + coalesce(ra.failed_attempts, 0) as failed_attempts
    from agg
    left join rel_preset rp
      on rp.target = agg.target and rp.preset = agg.preset and rp.bucket_start = agg.bucket_start
    left join rel_all ra on ra.target = agg.target and ra.bucket_start = agg.bucket_start
),
with_p as (
    select *, case when attempts = 0 then 0.0 else failed_attempts / attempts end as p
    from joined
),
final as (
    select target, preset, bucket_start, runs, price_per_hour, price_stale, tokens_per_s, attempts, failed_attempts, p,
           case when p < 1 then 1 + $f * p / (1 - p) end as R,
           price_per_hour / (3600.0 * tokens_per_s) * 1e6 * (case when p < 1 then 1 + $f * p / (1 - p) end)
               as cost_per_mtok
    from with_p
    order by target, preset, bucket_start
)
select * from final
