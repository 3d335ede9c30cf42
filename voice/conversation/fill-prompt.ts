// A call's own prompt with its variables filled in: `{name}` becomes vars[name]. Shared by
// the outbound call's `prompt` + `dynamic_vars` and the pre-call gate's `custom_prompt` +
// `dynamic_vars`, so both follow one rule.

/** `{name}` → vars[name]; a reference without a key stays as written. */
export function fillPrompt(prompt: string, vars: Readonly<Record<string, string>>): string {
  return prompt.replace(/\{([^{}]+)\}/g, (whole, name: string) => (Object.hasOwn(vars, name) ? vars[name]! : whole));
}

/** The variables `prompt` names as `{name}`. */
export function referencedVars(prompt: string): Set<string> {
  return new Set([...prompt.matchAll(/\{([^{}]+)\}/g)].map((m) => m[1]!));
}
