-- Points in time where a target's environment changed (driver, CUDA, cuDNN, torch, image, GPU):
-- the newest $limit since $since (newest first). A field changes only between two known values: a
-- run that did not record a field (NULL: an older probe, a host that cannot tell) compares against
-- the last run that did, so "not recorded" never reads as a change.
with r as (
    select r.target, r.started_at, r.environment_id, e.driver, e.cuda_runtime, e.cudnn, e.torch,
           e.container_image, e.gpu_name,
           lag(r.environment_id) over w as prev_env,
           lag(e.driver ignore nulls) over w as prev_driver, lag(e.cuda_runtime ignore nulls) over w as prev_cuda,
           lag(e.cudnn ignore nulls) over w as prev_cudnn, lag(e.torch ignore nulls) over w as prev_torch,
           lag(e.container_image ignore nulls) over w as prev_image, lag(e.gpu_name ignore nulls) over w as prev_gpu
    from runs r
    join environments e using (environment_id)
    window w as (partition by r.target order by r.started_at)
),
final as (
    select target, started_at as changed_at, environment_id,
        concat_ws('; ',
            case when driver <> prev_driver then 'driver ' || prev_driver || ' → ' || driver end,
            case when cuda_runtime <> prev_cuda then 'CUDA ' || prev_cuda || ' → ' || cuda_runtime end,
            case when cudnn <> prev_cudnn then 'cuDNN ' || prev_cudnn || ' → ' || cudnn end,
            case when torch <> prev_torch then 'torch ' || prev_torch || ' → ' || torch end,
            case when container_image <> prev_image then 'image ' || prev_image || ' → ' || container_image end,
            case when gpu_name <> prev_gpu then 'GPU ' || prev_gpu || ' → ' || gpu_name end
        ) as change
    from r
    where prev_env is not null and environment_id <> prev_env
)
select * from final where change <> '' and changed_at >= $since order by changed_at desc, target limit $limit
