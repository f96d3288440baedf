// Clocks, pauses and a wake-up signal. A pause the caller awaits keeps the process alive (an
// unref'd timer would let Node exit under an awaited promise); the heartbeat loop's do not,
// so a member that was never closed does not keep a finished program running.

/** Monotonic milliseconds. */
export function now(): number {
  return performance.now();
}

/** Waits `ms` (at least 0). `keepAlive: false` lets the process exit meanwhile. */
export function sleep(ms: number, keepAlive = true): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, Math.max(0, ms));
    if (!keepAlive) timer.unref();
  });
}

/** Uniformly random in [low, high). */
export function jitter(low: number, high: number): number {
  return low + Math.random() * (high - low);
}

/** A flag that wakes whoever waits for it (Python's threading.Event). */
export class Signal {
  private flag = false;
  private waiters: Array<() => void> = [];

  get isSet(): boolean {
    return this.flag;
  }

  set(): void {
    this.flag = true;
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }

  clear(): void {
    this.flag = false;
  }

  /** Resolves true when set (at once if it is), false after `ms`. */
  wait(ms: number, keepAlive = true): Promise<boolean> {
    if (this.flag) return Promise.resolve(true);
    return new Promise((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const wake = (): void => {
        if (timer !== undefined) clearTimeout(timer);
        resolve(true);
      };
      this.waiters.push(wake);
      timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== wake);
        resolve(false);
      }, Math.max(0, ms));
      if (!keepAlive) timer.unref();
    });
  }
}

/** A mutual exclusion between async tasks (poll() and the heartbeats share one). */
export class Mutex {
  private tail: Promise<void> = Promise.resolve();
  private users = 0; // running or queued

  /** Runs `task` once every task queued before it is done. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    this.users += 1;
    const previous = this.tail;
    let release!: () => void;
    this.tail = new Promise((resolve) => (release = resolve));
    try {
      await previous;
      return await task();
    } finally {
      this.users -= 1;
      release();
    }
  }

  /** Runs `task` only if nobody holds or waits for the lock; else resolves `undefined`. */
  async tryRun<T>(task: () => Promise<T>): Promise<T | undefined> {
    return this.users === 0 ? this.run(task) : undefined;
  }
}
