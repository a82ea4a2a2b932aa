-- measuring_skip_insert: a target a compare run skipped for its budget.
-- $1..$10: compare_run_id, target, scope, month, currency, budget, spent, expected, message, skipped_at.
insert or replace into dispatch_skips (compare_run_id, target, scope, month, currency, budget, spent, expected,
                                       message, skipped_at)
with final as (
    select $1::varchar, $2::varchar, $3::varchar, $4::date, $5::varchar, $6::double, $7::double, $8::double,
           $9::varchar, $10::timestamptz
)
select * from final
