-- land_insert_telemetry: the batch's NVML samples, one row per sample.
insert into telemetry (run_id, t, gpu, util, mem_util, power_w, sm_clock_mhz, temp_c, phase)
with final as (
    select run_id, t::double, gpu::integer, util::double, mem_util::double, power_w::double,
           sm_clock_mhz::double, temp_c::double, phase::varchar
    from batch_telemetry
)
select * from final
