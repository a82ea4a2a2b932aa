-- NVML telemetry reduced to one row per target and week (never raw samples into a chart):
-- each run's mean power / SM clock first (one pass over the samples, no join on 10M rows), then
-- the median over that week's runs.
with per_run as (
    select run_id, count(*) as samples, avg(power_w) as power_w, avg(sm_clock_mhz) as sm_clock_mhz,
           max(temp_c) as temp_c_max, avg(util) as util
    from telemetry
    group by run_id
),
final as (
    select r.target, date_trunc('week', r.started_at) as week, sum(p.samples) as samples,
           median(p.power_w) as power_w_median, median(p.sm_clock_mhz) as sm_clock_mhz_median,
           max(p.temp_c_max) as temp_c_max, avg(p.util) as util_mean
    from per_run p
    join runs r using (run_id)
    where r.started_at >= $since
    group by r.target, week
)
select * from final order by target, week
