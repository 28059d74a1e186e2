//! Tests of the nvlist decoder: the spec's worked example, real replies from the lab,
//! refusals of malformed input, and property tests (round trips, mutations).

mod errors;
mod example;
mod lab;
mod lookup;
mod props;
mod seeds;
mod views;
