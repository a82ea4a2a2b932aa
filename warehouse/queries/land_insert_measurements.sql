-- land_insert_measurements: the batch's measurements; list/JSON columns arrive as JSON text.
insert into measurements (run_id, seq, benchmark, benchmark_version, metric, value, unit, params,
                          peak, peak_source, efficiency, repeats, statistic, spread, spread_kind,
                          flags, throttle_reasons, sm_clock_mhz_min, sm_clock_mhz_median,
                          power_w_median, power_w_max, temp_c_max)
with final as (
    select run_id, seq::integer, benchmark, benchmark_version, metric, value::double, unit,
           params::json, peak::double, peak_source::varchar, efficiency::double, repeats::integer,
           statistic, spread::double, spread_kind::varchar, flags::varchar::json::varchar[],
           throttle_reasons::varchar::json::varchar[], sm_clock_mhz_min::double,
           sm_clock_mhz_median::double, power_w_median::double, power_w_max::double,
           temp_c_max::double
    from batch_measurements
)
select * from final
