"""The static report: Altair charts over small pre-aggregated tables, one offline site."""
