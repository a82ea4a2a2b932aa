-- scaling_efficiency: the measured multi-GPU scaling series, one row per (target, preset, n_gpus).
-- Source: the multi-GPU probe (tasks/probe/distributed/multi_gpu.py). Its fine-tune rows are the ones with
-- scaling_efficiency not null: the n=1 baseline carries 1.0 by definition, n > 1 carries
-- tokens/s(n) / (n * tokens/s(1)) measured in the same run. Plain single-GPU fine-tune rows
-- (scaling_efficiency null) are not part of a series and are left out.
-- Per row: the latest run's figures, plus the median and count over every run in the series.
-- $target: one target, or null for all of them.
with series as (
    select r.target, f.preset, f.n_gpus, f.mode, f.precision, f.micro_batch, f.seq_len,
           f.tokens_per_s, f.scaling_efficiency, f.message, r.run_id, r.started_at,
           e.gpu_name, json_extract_string(e.doc, '$.extra.interconnect') as interconnect
    from finetunes f
    join runs r using (run_id)
    left join environments e using (environment_id)
    where f.status in ('ok', 'unstable')
      and f.scaling_efficiency is not null
      and f.tokens_per_s > 0
      and (cast($target as varchar) is null or r.target = cast($target as varchar))
),
ranked as (
    select *,
           row_number() over (partition by target, preset, n_gpus
                              order by started_at desc, run_id) as recency,
           count(*) over (partition by target, preset, n_gpus) as runs,
           median(scaling_efficiency) over (partition by target, preset, n_gpus) as efficiency_median,
           median(tokens_per_s) over (partition by target, preset, n_gpus) as tokens_per_s_median
    from series
),
final as (
    select target, preset, n_gpus, tokens_per_s, scaling_efficiency, tokens_per_s_median,
           efficiency_median, runs, started_at as measured_at, run_id, mode, precision,
           micro_batch, seq_len, gpu_name, interconnect, message
    from ranked
    where recency = 1
)
select * from final order by target, preset, n_gpus
