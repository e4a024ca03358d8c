// A job that holds its claim for params.ms (default 60 s), or until its claim is lost: what the failover
// benchmark kills a replica in the middle of.
export default {
  run(ctx, params) {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, params?.ms ?? 60_000);
      ctx.signal.addEventListener('abort', () => { clearTimeout(t); resolve(); }, { once: true });
    });
  },
};
