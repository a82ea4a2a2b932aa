-- 100_estimate_scaling: a multi-GPU estimate keeps the scaling efficiency it predicted, and is scored on the
-- distributed probe's measured one when that lands (issue 42). Owner: tasks/estimate/estimate_track.py.
-- The prediction (recorded by `costgap estimate --record` for a target with more than one GPU):
alter table estimates add column scaling_efficiency double;      -- predicted tokens/s(n) / (n x tokens/s(1))
alter table estimates add column scaling_lo double;              -- its 90% interval
alter table estimates add column scaling_hi double;
alter table estimates add column fabric varchar;                 -- nvswitch | nvlink | pcie | pcie-host it assumed
alter table estimates add column network varchar;                -- kind:gbps between nodes, or null
alter table estimates add column busbw_gbps double;              -- the predicted all-reduce busbw it rests on
-- The score, written once when the first multi-GPU run of (target, preset) at that GPU count lands:
alter table estimates add column measured_scaling_efficiency double;  -- median over that landing's runs
alter table estimates add column scaling_measured_at timestamptz;    -- newest start among those runs
alter table estimates add column scaling_landed_at timestamptz;      -- when that landing happened
alter table estimates add column scaling_error double;               -- predicted - measured (efficiency points)
alter table estimates add column scaling_inside boolean;             -- the measurement inside the 90% interval
