// How the operator CLIs end: the exit code main() returns, or 1 with the error's message (never a stack of secrets).
export function runCli(main: () => Promise<number>): void {
  main().then(
    (code) => process.exit(code),
    (err: unknown) => {
      console.error(`error: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    },
  );
}
