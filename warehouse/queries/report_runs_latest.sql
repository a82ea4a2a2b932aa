-- The latest $limit runs of every target with their fine-tune throughput per preset and attempt counts.
with a as (
    select run_id, count(*) as attempts, count(*) filter (where state in ('failed', 'crashed')) as failed
    from attempts
    where run_id is not null
    group by run_id
),
f as (
    -- per preset, never averaged across presets (a 1b and an 8b tokens/s are different workloads)
    select run_id, string_agg(preset || ' ' || coalesce(cast(round(tokens_per_s) as bigint)::varchar, status), '; '
                              order by seq) as preset_tokens_per_s,
           bool_and(coalesce(steady, true)) as steady
    from finetunes
    group by run_id
),
ranked as (
    select r.target, r.run_id, r.profile, r.status, r.started_at, r.finished_at, r.environment_id,
           r.origin_kind, r.probe_version,
           row_number() over (partition by r.target order by r.started_at desc, r.run_id) as rn,
           count(*) over (partition by r.target) as total
    from runs r
),
final as (
    select k.*, f.preset_tokens_per_s, f.steady, coalesce(a.attempts, 0) as attempts,
           coalesce(a.failed, 0) as failed_attempts, p.label as provenance
    from ranked k
    left join f using (run_id)
    left join a using (run_id)
    left join provenance p on p.scope = 'run' and p.key = k.run_id
    where k.rn <= $limit
)
select * from final order by target, started_at desc, run_id
