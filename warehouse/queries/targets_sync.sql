-- targets_sync: the targets file's facts for one target (provider, region, instance type, GPU,
-- billing, pool, dispatch), inserted or updated; first_seen is kept. $1..$9 in that order.
insert into targets (target, provider, region, instance_type, gpu_model, gpu_count, billing_mode,
                     work_pool, dispatch, first_seen, updated_at)
with final as (
    select $1::varchar, $2::varchar, $3::varchar, $4::varchar, $5::varchar, $6::integer,
           $7::varchar, $8::varchar, $9::varchar, now(), now()
)
select * from final
on conflict (target) do update set
    provider = excluded.provider, region = excluded.region, instance_type = excluded.instance_type,
    gpu_model = excluded.gpu_model, gpu_count = excluded.gpu_count,
    billing_mode = excluded.billing_mode, work_pool = excluded.work_pool,
    dispatch = excluded.dispatch, updated_at = excluded.updated_at
