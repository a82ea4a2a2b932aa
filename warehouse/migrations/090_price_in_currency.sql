-- One conversion of a dated price into the reporting currency, for every query that prices a run:
-- cost_priced_runs.sql (the cost model) and measuring_priced.sql (what measuring cost) call these two
-- macros instead of each writing the arithmetic. Rates are units per USD (the USD pivot), each the one in
-- force on the run's UTC day; a missing rate gives NULL and fx_missing true (the caller raises, naming
-- the currency).
create or replace macro price_in_currency(native, cur, want, from_units_per_usd, to_units_per_usd) as
    case
        when native is null then null
        when cur = want then native
        else native / (case when cur = 'USD' then 1.0 else from_units_per_usd end)
                    * (case when want = 'USD' then 1.0 else to_units_per_usd end)
    end;
create or replace macro price_fx_missing(native, cur, want, from_units_per_usd, to_units_per_usd) as
    native is not null and cur <> want
        and ((cur <> 'USD' and from_units_per_usd is null) or (want <> 'USD' and to_units_per_usd is null));
