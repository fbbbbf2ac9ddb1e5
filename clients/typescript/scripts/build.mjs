// Builds dist/ from src/ with tsc, twice: dist/esm (ES modules) and dist/cjs (CommonJS),
// each with its declarations. The package is "type": "module", so dist/cjs gets a
// package.json of its own that makes Node (and TypeScript) read its .js files as CommonJS.

import { execFileSync } from "node:child_process";
import { rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";

const tsc = createRequire(import.meta.url).resolve("typescript/bin/tsc");
rmSync("dist", { recursive: true, force: true });
for (const project of ["tsconfig.json", "tsconfig.cjs.json"]) {
  execFileSync(process.execPath, [tsc, "-p", project], { stdio: "inherit" });
}
writeFileSync("dist/cjs/package.json", JSON.stringify({ type: "commonjs" }) + "\n");
