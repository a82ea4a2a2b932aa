-- Points in time where a target's environment changed (driver, CUDA, cuDNN, torch, image, GPU):
-- the newest $limit since $since (newest first).
with r as (
    select r.target, r.started_at, r.environment_id, e.driver, e.cuda_runtime, e.cudnn, e.torch,
           e.container_image, e.gpu_name,
           lag(r.environment_id) over w as prev_env,
           lag(e.driver) over w as prev_driver, lag(e.cuda_runtime) over w as prev_cuda,
           lag(e.cudnn) over w as prev_cudnn, lag(e.torch) over w as prev_torch,
           lag(e.container_image) over w as prev_image, lag(e.gpu_name) over w as prev_gpu
    from runs r
    join environments e using (environment_id)
    window w as (partition by r.target order by r.started_at)
),
final as (
    select target, started_at as changed_at, environment_id,
        concat_ws('; ',
            case when driver is distinct from prev_driver then 'driver ' || coalesce(prev_driver, '-') || ' → ' || coalesce(driver, '-') end,
            case when cuda_runtime is distinct from prev_cuda then 'CUDA ' || coalesce(prev_cuda, '-') || ' → ' || coalesce(cuda_runtime, '-') end,
            case when cudnn is distinct from prev_cudnn then 'cuDNN ' || coalesce(prev_cudnn, '-') || ' → ' || coalesce(cudnn, '-') end,
            case when torch is distinct from prev_torch then 'torch ' || coalesce(prev_torch, '-') || ' → ' || coalesce(torch, '-') end,
            case when container_image is distinct from prev_image then 'image ' || coalesce(prev_image, '-') || ' → ' || coalesce(container_image, '-') end,
            case when gpu_name is distinct from prev_gpu then 'GPU ' || coalesce(prev_gpu, '-') || ' → ' || coalesce(gpu_name, '-') end
        ) as change
    from r
    where prev_env is not null and environment_id <> prev_env
)
select * from final where change <> '' and changed_at >= $since order by changed_at desc, target limit $limit
