-- NVML telemetry reduced to one row per target and week (never raw samples into a chart).
with t as (
    select r.target, date_trunc('week', r.started_at) as week, s.power_w, s.sm_clock_mhz, s.temp_c, s.util
    from telemetry s
    join runs r using (run_id)
),
final as (
    select target, week, count(*) as samples,
           approx_quantile(power_w, 0.5) as power_w_median,
           approx_quantile(sm_clock_mhz, 0.5) as sm_clock_mhz_median,
           max(temp_c) as temp_c_max,
           avg(util) as util_mean
    from t
    group by target, week
)
select * from final order by target, week
