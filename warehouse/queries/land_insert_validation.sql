-- land_insert_validation: every validation result of the batch (per expectation, per run).
insert into validation_results (validation_id, run_id, suite, expectation, column_name, success,
                                observed, validated_at)
with final as (
    select validation_id, run_id::varchar, suite, expectation, column_name::varchar,
           success::boolean, observed::varchar, validated_at::timestamptz
    from batch_validation
)
select * from final
