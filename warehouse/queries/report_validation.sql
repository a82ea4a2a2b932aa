-- Validation results per suite and expectation: how often checked, how often failed, and when.
with v as (
    select suite, expectation, column_name, success, validated_at, observed
    from validation_results
),
final as (
    select suite, expectation, any_value(column_name) as column_name, count(*) as checked,
           count(*) filter (where not success) as failed, max(validated_at) as last_validated_at,
           any_value(observed) filter (where not success) as failed_example
    from v
    group by suite, expectation
)
select * from final order by failed desc, suite, expectation
