-- Validated batches per day since $since: passed and failed expectation counts.
with v as (
    select date_trunc('day', validated_at) as day, success from validation_results where validated_at >= $since
),
final as (
    select day, count(*) filter (where success) as passed, count(*) filter (where not success) as failed
    from v
    group by day
)
select * from final order by day
