-- cost_fx_missing: priced runs whose price could not be converted: a missing rate is an error, not 1.0.
with missing as (
    select fx_missing_currency as currency, started_at
    from _cost_runs
    where fx_missing
),
final as (
    select currency, min(started_at)::date as first_date, count(*) as runs
    from missing
    group by currency
    order by currency
)
select * from final
