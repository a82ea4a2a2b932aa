-- cost_fx_missing: priced runs whose price could not be converted: a missing rate is an error, not 1.0.
with missing as (
    select case when price_currency <> 'USD' and from_units_per_usd is null then price_currency
                else $currency end as currency,
           run_date
    from _cost_runs
    where price_native is not null and price_per_hour is null
),
final as (
    select currency, min(run_date) as first_date, count(*) as runs
    from missing
    group by currency
    order by currency
)
select * from final
