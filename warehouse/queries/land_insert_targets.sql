-- land_insert_targets: a minimal targets row for every target first seen in this batch.
insert into targets (target, gpu_model, gpu_count, dispatch, first_seen, updated_at)
with batch as (
    select *, row_number() over (partition by target order by first_seen) as n from batch_targets
),
final as (
    select b.target, b.gpu_model::varchar, b.gpu_count::integer, b.dispatch::varchar,
           b.first_seen::timestamptz, now()
    from batch as b
    anti join targets as t on t.target = b.target
    where b.n = 1
)
select * from final
