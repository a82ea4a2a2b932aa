-- estimate_scaling_landing: per recorded multi-GPU estimate not yet scored on its scaling, the first landing
-- after it was recorded that brought a measured scaling efficiency of its (target, preset) at its GPU count
-- (the distributed probe's fine-tune rows with n_gpus = gpu_count, status ok or unstable), whatever those runs'
-- own start times (as estimate_first_landing.sql, issue 37.6): the measured efficiency is the median over that
-- landing's rows; measured_at the newest start among them (tasks/estimate/estimate_track.py score_scaling()).
with pending as (
    select estimate_id, target, preset, gpu_count, estimated_at, scaling_efficiency, scaling_lo, scaling_hi
    from estimates
    where scaling_efficiency is not null and measured_scaling_efficiency is null
),
landed as (
    select p.estimate_id, r.landed_at, r.started_at, f.scaling_efficiency
    from pending p
    join runs r on r.target = p.target and r.landed_at > p.estimated_at
    join finetunes f on f.run_id = r.run_id and f.preset = p.preset and f.n_gpus = p.gpu_count
    where f.status in ('ok', 'unstable') and f.scaling_efficiency is not null
),
first_landing as (
    select estimate_id, min(landed_at) as landed_at
    from landed
    group by estimate_id
),
final as (
    select p.estimate_id, p.target, p.preset, p.gpu_count, p.scaling_efficiency, p.scaling_lo, p.scaling_hi,
           fl.landed_at as scaling_landed_at, max(l.started_at) as scaling_measured_at,
           median(l.scaling_efficiency) as measured_scaling_efficiency, count(*) as measured_runs
    from pending p
    join first_landing fl using (estimate_id)
    join landed l on l.estimate_id = fl.estimate_id and l.landed_at = fl.landed_at
    group by all
    order by p.target, p.preset
)
select * from final
