-- Achieved / peak per target, family and metric: median over the runs of the last $days days
-- before that target's latest run (a roofline-style summary, a few rows per target).
with m as (
    select r.target, r.started_at, m.benchmark, m.metric, m.unit, m.value, m.peak, m.efficiency,
           coalesce(len(m.throttle_reasons), 0) > 0 as throttled,
           lower(m.benchmark || ' ' || m.metric) as name
    from measurements m
    join runs r using (run_id)
),
kinds as (
    select *,
        case
            when name like '%pcie%' or name like '%h2d%' or name like '%d2h%' then 'PCIe'
            when name like '%dataloader%' or name like '%loader%' or name like '%storage%'
                 or name like '%disk%' or name like '%feed%' then 'Feed'
            when name like '%gemm%' or name like '%matmul%' or name like '%flops%' then 'GEMM'
            when name like '%hbm%' or name like '%memory%' or name like '%copy%'
                 or name like '%triad%' or name like '%bandwidth%' then 'HBM'
            else 'Other'
        end as family,
        max(started_at) over (partition by target) as latest
    from m
),
final as (
    select target, family, benchmark, metric, any_value(unit) as unit,
           median(value) as value, median(peak) as peak, median(efficiency) as efficiency,
           count(*) as n, count(*) filter (where throttled) as throttled_runs
    from kinds
    where started_at >= latest - to_days(cast($days as integer))
    group by target, family, benchmark, metric
)
select * from final order by family, benchmark, metric, target
