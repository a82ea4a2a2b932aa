-- Measurements that ran throttled (NVML clock-event reasons recorded) or were flagged unstable/throttled.
with flagged as (
    select r.target, r.started_at, m.run_id, m.benchmark, m.metric, m.value, m.unit,
           m.throttle_reasons, m.flags, m.sm_clock_mhz_min, m.sm_clock_mhz_median, m.power_w_median,
           m.temp_c_max
    from measurements m
    join runs r using (run_id)
    where coalesce(len(m.throttle_reasons), 0) > 0
       or list_has_any(coalesce(m.flags, []::varchar[]), ['throttled', 'unstable', 'power_capped'])
),
final as (
    select *, count(*) over () as total
    from flagged
    order by started_at desc, run_id, benchmark, metric
    limit $limit
)
select * from final
