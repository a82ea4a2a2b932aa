-- estimate_workloads: what each preset is, from its measured (not synthetic) successful fine-tunes, per
-- (GPU, target): MFU and tokens/s of the newest run (FLOPs per token = MFU x peak / tokens/s), parameter counts, micro-batch, the peak memory the allocator held, and the
-- median tokens/s (tasks/estimate/calibrate.py calibrates the estimator on these). Inputs only.
with measured as (
    select f.*, r.target, r.started_at, e.gpu_name, coalesce(e.gpu_count, 1) as env_gpus
    from finetunes f
    join runs r using (run_id)
    join environments e using (environment_id)
    left join provenance p on p.scope = 'run' and p.key = r.run_id
    where f.status = 'ok' and f.tokens_per_s > 0 and f.mfu > 0
      and p.label is null and e.gpu_name is not null and coalesce(f.n_gpus, 1) = 1
),
final as (
    select preset, gpu_name, target, count(*) as runs,
           median(tokens_per_s) as tokens_per_s,
           list(tokens_per_s order by tokens_per_s) as samples,
           arg_max(mode, started_at) as mode,
           arg_max(precision, started_at) as precision,
           arg_max(seq_len, started_at) as seq_len,
           arg_max(micro_batch, started_at) as micro_batch,
           arg_max(compile, started_at) as compile,
           arg_max(activation_checkpointing, started_at) as activation_checkpointing,
           arg_max(params_total, started_at) as params_total,
           arg_max(params_trainable, started_at) as params_trainable,
           arg_max(params_non_embedding, started_at) as params_non_embedding,
           arg_max(mfu, started_at) as mfu_last,
           arg_max(tokens_per_s, started_at) as tokens_per_s_last,
           max(peak_mem_reserved_gib) as peak_mem_gib,
           min(started_at) as first_run_at,
           max(started_at) as last_run_at
    from measured
    group by preset, gpu_name, target
    order by preset, gpu_name, target
)
select * from final
