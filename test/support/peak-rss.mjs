// Preload (`node --import`) for tests that bound a process's memory: at exit, prints the kernel's high-water
// mark of its resident set (`process.resourceUsage().maxRSS`, KB) to stderr as `peak-rss-kb <n>`.
process.on('exit', () => process.stderr.write(`peak-rss-kb ${process.resourceUsage().maxRSS}\n`));
