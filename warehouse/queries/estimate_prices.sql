-- estimate_prices: every price-book key with a price in force at $today for $billing, converted to
-- $currency at the FX rates in force that day (USD pivot), as cost_price_now.sql does per target.
-- The estimator prices its candidates with these; fx_missing marks a price whose rate is missing.
with now_price as (
    select provider, region, instance_type, billing_mode, currency, price_per_hour as price_native,
           effective_from, last_seen_at, source
    from prices
    where billing_mode = $billing and effective_from <= $today and (effective_to is null or $today < effective_to)
),
rates as (
    select currency, arg_max(units_per_usd, rate_date) as units_per_usd
    from fx_rates
    where rate_date <= cast(timezone('UTC', cast($today as timestamptz)) as date)
    group by currency
),
final as (
    select n.provider, n.region, n.instance_type, n.billing_mode, n.currency as price_currency, n.price_native,
           n.effective_from, n.last_seen_at, n.source,
           case
               when n.currency = $currency then n.price_native
               else n.price_native
                    / (case when n.currency = 'USD' then 1.0 else fr.units_per_usd end)
                    * (case when $currency = 'USD' then 1.0 else tr.units_per_usd end)
           end as price_per_hour,
           n.currency <> $currency and ((n.currency <> 'USD' and fr.units_per_usd is null)
                                        or ($currency <> 'USD' and tr.units_per_usd is null)) as fx_missing
    from now_price n
    left join rates fr on fr.currency = n.currency
    left join rates tr on tr.currency = $currency
    order by n.provider, n.region, n.instance_type
)
select * from final
