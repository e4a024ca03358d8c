// A job that does nothing: the benchmark measures the engine, not the work.
export default { run() {} };
