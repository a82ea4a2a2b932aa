-- land_insert_finetunes: the batch's fine-tune results; step lists arrive as JSON text.
insert into finetunes (run_id, seq, preset, status, mode, precision, device, n_gpus, params_total,
                       params_trainable, params_non_embedding, seq_len, micro_batch, compile,
                       activation_checkpointing, steps_timed, tokens_per_s, step_time_median_s,
                       step_time_p10_s, step_time_p90_s, steady, compile_s, mfu,
                       peak_mem_allocated_gib, peak_mem_reserved_gib, energy_j, j_per_token,
                       kwh_per_mtok, loss_first, loss_last, scaling_efficiency, step_time_s,
                       window_tokens_per_s, message, config_search, configs_tried, search_s)
with final as (
    select run_id, seq::integer, preset, status, mode, precision, device::varchar,
           n_gpus::integer, params_total::bigint, params_trainable::bigint,
           params_non_embedding::bigint, seq_len::integer, micro_batch::integer, compile::boolean,
           activation_checkpointing::boolean, steps_timed::integer, tokens_per_s::double,
           step_time_median_s::double, step_time_p10_s::double, step_time_p90_s::double,
           steady::boolean, compile_s::double, mfu::double, peak_mem_allocated_gib::double,
           peak_mem_reserved_gib::double, energy_j::double, j_per_token::double,
           kwh_per_mtok::double, loss_first::double, loss_last::double,
           scaling_efficiency::double, step_time_s::varchar::json::double[],
           window_tokens_per_s::varchar::json::double[], message::varchar,
           config_search::varchar, configs_tried::varchar::json, search_s::double
    from batch_finetunes
)
select * from final
