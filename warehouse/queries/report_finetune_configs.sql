-- report_finetune_configs: per (target, preset), the newest measured fine-tune's configuration: how it
-- was found (config_search: searched | pinned | fixed; NULL: a bundle from before the search) and every
-- candidate it tried (configs_tried JSON: configuration, trial tokens/s, peak GiB, chosen or why not).
with measured as (
    select r.target, f.preset, r.started_at, f.run_id, f.status, f.micro_batch, f.activation_checkpointing,
           f.compile, f.tokens_per_s, f.peak_mem_allocated_gib, f.config_search,
           coalesce(f.configs_tried::varchar, '[]') as configs_tried, f.search_s,
           row_number() over (partition by r.target, f.preset order by r.started_at desc, f.run_id) as newest
    from finetunes f
    join runs r using (run_id)
    where f.status in ('ok', 'unstable')
),
final as (
    select * exclude (newest) from measured where newest = 1 order by target, preset
)
select * from final
