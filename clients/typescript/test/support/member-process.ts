// A TypeScript GroupMember in its own process, for what a test cannot do to a member in its
// own: freeze it (SIGSTOP) past its session timeout and wake it to commit as a zombie.
//
//   node member-process.js '<json: url, group, options>'
//
// Prints one JSON line per listener call ({"kind", "partitions", "at"}) and per command's
// outcome; reads commands from stdin:
//   {"cmd": "commit", "offset": n, "writes"?: [...]}   commit n for every owned partition
//   {"cmd": "freeze-then-commit", "offset": n, "writes"?: [...]}   stop polling, SIGSTOP
//       itself, and once continued commit n for what it owned (a zombie's commit); with
//       writes, then commit the writes alone too ({"writesAlone": ...})
//   {"cmd": "close"}   close (leave) and exit

import { createInterface } from "node:readline";
import { GroupMember, type GroupMemberOptions, type TopicPartition, type Write } from "../../src/index.js";

interface Config {
  url: string;
  group: string;
  options: GroupMemberOptions;
}

const config = JSON.parse(process.argv[2] as string) as Config;
const say = (message: Record<string, unknown>): void => void process.stdout.write(`${JSON.stringify(message)}\n`);
const event = (kind: string) => (partitions: TopicPartition[]) => say({ kind, partitions, at: Date.now() });
const member = new GroupMember(config.url, config.group, {
  ...config.options,
  listener: { onPartitionsAssigned: event("assigned"), onPartitionsRevoked: event("revoked"), onPartitionsLost: event("lost") },
});

let polling = true;
const loop = (async () => {
  while (polling) {
    try {
      await member.poll(100);
    } catch (error) {
      say({ pollError: String(error) });
    }
  }
})();

async function commit(partitions: TopicPartition[], offset: number, writes?: Write[], what = "commit"): Promise<void> {
  try {
    await member.commit(partitions.map((tp) => ({ ...tp, offset })), writes ? { writes } : {});
    say({ [what]: "ok", partitions });
  } catch (error) {
    const e = error as { name?: string; error?: number };
    say({ [what]: "failed", errorClass: e.name, errorCode: e.error, message: String(error) });
  }
}

createInterface({ input: process.stdin }).on("line", async (line) => {
  const command = JSON.parse(line) as { cmd: string; offset?: number; writes?: Write[] };
  if (command.cmd === "commit") {
    await commit(member.assignment(), command.offset ?? 0, command.writes);
  } else if (command.cmd === "freeze-then-commit") {
    polling = false;
    await loop;
    const owned = member.assignment();
    say({ frozen: owned });
    process.kill(process.pid, "SIGSTOP"); // returns once someone sends SIGCONT
    await commit(owned, command.offset ?? 0, command.writes);
    if (command.writes) await commit([], 0, command.writes, "writesAlone");
  } else if (command.cmd === "close") {
    polling = false;
    await loop;
    await member.close();
    say({ closed: true });
    process.exit(0);
  }
});
