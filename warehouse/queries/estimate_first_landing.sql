-- estimate_first_landing: per unscored estimate, the first landing after the estimate was recorded that
-- brought a measured fine-tune of its (target, preset) (status ok or unstable: both are measurements,
-- issue 37.5), whatever those runs' own start times (issue 37.6: an estimate is scored by what the
-- estimator could have seen). A landing batch stamps all its runs with one landed_at. measured_at: the
-- newest start among that landing's runs, the end of the cost window the measurement is read over
-- (tasks/estimate/estimate_track.py score()).
with pending as (
    select estimate_id, target, preset, estimated_at, tokens_per_s, tokens_per_s_lo, tokens_per_s_hi
    from estimates
    where measured_at is null
),
landed as (
    select p.estimate_id, r.landed_at, r.started_at
    from pending p
    join runs r on r.target = p.target and r.landed_at > p.estimated_at
    join finetunes f on f.run_id = r.run_id and f.preset = p.preset
    where f.status in ('ok', 'unstable') and f.tokens_per_s > 0
),
first_landing as (
    select estimate_id, min(landed_at) as landed_at
    from landed
    group by estimate_id
),
final as (
    select p.estimate_id, p.target, p.preset, p.estimated_at, p.tokens_per_s, p.tokens_per_s_lo,
           p.tokens_per_s_hi, fl.landed_at as measurement_landed_at, max(l.started_at) as measured_at
    from pending p
    join first_landing fl using (estimate_id)
    join landed l on l.estimate_id = fl.estimate_id and l.landed_at = fl.landed_at
    group by all
    order by p.estimated_at, p.target, p.preset
)
select * from final
