-- cost_price_now: per target, the price in force at $today (the price a person would pay now), converted
-- to $currency at the FX rates in force on that day (USD pivot), with the period's provenance. A target
-- with no price in force at $today has no row. fx_missing marks a price whose rate is missing.
with t as (
    select target, provider, region, instance_type,
           coalesce(cast($billing as varchar), billing_mode, 'on_demand') as billing_mode
    from targets
),
now_price as (
    select t.target, p.currency, p.price_per_hour as price_native, p.effective_from, p.last_seen_at, p.source
    from t
    join prices p using (provider, region, instance_type, billing_mode)
    where p.effective_from <= $today and (p.effective_to is null or $today < p.effective_to)
),
rates as (  -- the rate in force on $today's UTC date per currency
    select currency, arg_max(units_per_usd, rate_date) as units_per_usd
    from fx_rates
    where rate_date <= cast(timezone('UTC', cast($today as timestamptz)) as date)
    group by currency
),
final as (
    select n.target, n.currency as price_currency, n.price_native, n.effective_from, n.last_seen_at, n.source,
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
    order by n.target
)
select * from final
