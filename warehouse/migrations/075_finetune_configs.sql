-- Each card at its best (issue 35): how a fine-tune's configuration was found, and every candidate.
--   config_search: 'searched' | 'pinned' | 'fixed'; NULL for a bundle from before the search
--     ("configuration not searched" on every surface).
--   configs_tried: the bundle's Finetune.configs_tried as JSON (micro_batch, activation_checkpointing,
--     compile, estimated_gib, outcome chosen|slower|dropped, tokens_per_s, peak_mem_allocated_gib,
--     reason); [] where none was recorded.
--   search_s: wall seconds of the trials (they overlap the GPU warm-up they replace).
alter table finetunes add column config_search varchar;
alter table finetunes add column configs_tried json;
alter table finetunes add column search_s double;
