-- scaling_allreduce: the all-reduce sweep of each target's latest multi-GPU run, one row per size.
-- Source: measurements with benchmark 'allreduce' (tasks/probe/distributed/multi_gpu.py): algbw and busbw
-- (= algbw * 2(n-1)/n, nccl-tests) in GB/s, median over timed batches, IQR as spread.
-- is_largest marks the largest size of that run (the bandwidth-bound figure a report headlines).
-- $target: one target, or null for all of them.
with ar as (
    select r.target, r.run_id, r.started_at, m.metric, m.value, m.spread,
           cast(json_extract(m.params, '$.bytes') as bigint) as bytes,
           cast(json_extract(m.params, '$.n_gpus') as integer) as n_gpus,
           json_extract_string(m.params, '$.backend') as backend,
           json_extract_string(m.params, '$.dtype') as dtype
    from measurements m
    join runs r using (run_id)
    where m.benchmark = 'allreduce'
      and m.metric in ('algbw_gbps', 'busbw_gbps')
      and (cast($target as varchar) is null or r.target = cast($target as varchar))
),
latest as (
    select target, arg_max(run_id, started_at) as run_id
    from ar
    group by target
),
sizes as (
    select ar.target, ar.run_id, ar.started_at as measured_at, ar.bytes, ar.n_gpus, ar.backend,
           ar.dtype,
           max(ar.value) filter (where ar.metric = 'algbw_gbps') as algbw_gbps,
           max(ar.value) filter (where ar.metric = 'busbw_gbps') as busbw_gbps,
           max(ar.spread) filter (where ar.metric = 'busbw_gbps') as busbw_iqr_gbps
    from ar
    join latest using (target, run_id)
    group by all
),
final as (
    select *, bytes = max(bytes) over (partition by target) as is_largest
    from sizes
)
select * from final order by target, bytes
