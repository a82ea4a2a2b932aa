-- estimate_efficiency: achieved over datasheet peak per (GPU, target), from measured (not synthetic) runs: the
-- GEMM burst per dtype and the memory copy. The estimator carries these to GPUs not yet measured.
with m as (
    select e.gpu_name, r.target, ms.benchmark, ms.metric, ms.efficiency
    from measurements ms
    join runs r using (run_id)
    join environments e using (environment_id)
    left join provenance p on p.scope = 'run' and p.key = r.run_id
    where p.label is null and ms.efficiency is not null and e.gpu_name is not null
      and ((ms.benchmark = 'gemm' and ms.metric in ('bf16_tflops', 'fp16_tflops'))
           or (ms.benchmark = 'memory' and ms.metric = 'copy_gbps'))
),
final as (
    select gpu_name, target, metric, median(efficiency) as efficiency, count(*) as n
    from m
    group by gpu_name, target, metric
    order by gpu_name, target, metric
)
select * from final
