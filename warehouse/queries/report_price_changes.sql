-- Price changes that apply to each target: every effective_from of its (provider, region, instance
-- type) that follows an earlier period (the first period is the starting price, not a change).
with t as (
    select target, provider, region, instance_type from targets
),
periods as (
    select t.target, p.effective_from, p.price_per_hour, p.currency, p.billing_mode, p.source,
           lag(p.price_per_hour) over (partition by t.target order by p.effective_from) as previous_price
    from prices p
    join t on p.provider = t.provider and p.instance_type = t.instance_type
          and (p.region = t.region or t.region is null)
    where p.billing_mode = $billing
),
final as (
    select target, effective_from as changed_at, previous_price, price_per_hour, currency, billing_mode, source
    from periods
    where previous_price is not null
)
select * from final order by changed_at, target
