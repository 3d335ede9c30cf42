// `{{variable}}` placeholders of a campaign's message_template (api.md: missing variables
// render as empty strings). Spaces inside the braces are allowed; a value that is not
// text is written as JSON.
const PLACEHOLDER = /\{\{\s*([^{}\s]+)\s*\}\}/g;

export function renderTemplate(template: string, variables: Record<string, unknown> | null): string {
  return template.replace(PLACEHOLDER, (_m, name: string) => {
    const v = variables?.[name];
    if (v === undefined || v === null) return '';
    return typeof v === 'string' ? v : JSON.stringify(v);
  });
}
