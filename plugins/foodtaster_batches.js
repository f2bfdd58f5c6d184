// Foodtaster batches in the Airflow UI: a React app plugin, plain JavaScript (no build step) on
// the React that Airflow's UI shares with its plugins (globalThis.React).
//
// It shows the plugin's server-rendered pages (/foodtaster/...) in a frame of its own, whose
// sandbox lets a person's click open a page in the whole window: an external view's frame
// (Airflow's "allow-scripts allow-same-origin allow-forms allow-downloads") refuses every top
// navigation, so the links to Airflow's own pages did nothing
// (docs/decisions/019-the-batches-page-as-a-react-app-plugin.md).
//
// - A link marked target=_top (the run links of the pages and the alerts) opens in the whole
//   window: the frame allows top navigation on a click.
// - Any other page outside /foodtaster/ that the frame comes to (a link without a target) is
//   opened in the whole window instead of the UI nested in itself.
// - The window's address follows the frame (/plugin/foodtaster/<the page's path>), so a reload
//   or a shared address opens the same page.

const React = globalThis.React;

const SANDBOX = [
  "allow-scripts", "allow-same-origin", "allow-forms", "allow-downloads", "allow-popups",
  "allow-popups-to-escape-sandbox", "allow-top-navigation-by-user-activation",
].join(" ");
const ROUTE = "plugin/foodtaster/"; // the react_apps entry's url_route, under Airflow's base path
const PAGES = new URL("../", import.meta.url); // the plugin's pages: this file is <pages>/ui/...

function basePath() {
  return new URL(document.baseURI).pathname.replace(/\/?$/, "/");
}

// The page the window's address names (/plugin/foodtaster/<path>), else the batches page.
function wantedPage() {
  const base = basePath();
  const here = window.location.pathname;
  const rest = here.startsWith(base + ROUTE) ? here.slice((base + ROUTE).length) : "";
  if (!rest) {
    return PAGES.pathname;
  }
  return base + rest + window.location.search + window.location.hash;
}

function FoodtasterBatches() {
  const frame = React.useRef(null);
  const src = React.useRef(null);
  if (src.current === null) {
    src.current = wantedPage();
  }
  React.useEffect(() => {
    const element = frame.current;
    if (element === null) {
      return undefined;
    }
    const followed = () => {
      let where;
      try {
        where = element.contentWindow.location;
      } catch {
        return; // another origin: nothing to follow
      }
      if (where.href === "about:blank") {
        return;
      }
      if (!where.pathname.startsWith(PAGES.pathname)) {
        // An Airflow page (or any other) reached inside the frame: show it in the whole window.
        const target = where.href;
        element.src = "about:blank";
        window.location.assign(target);
        return;
      }
      const base = basePath();
      const path = where.pathname.startsWith(base) ? where.pathname.slice(base.length) : where.pathname;
      const address = base + ROUTE + path + where.search + where.hash;
      if (address !== window.location.pathname + window.location.search + window.location.hash) {
        // the router's own state kept: only the address changes, the page is not rendered again
        window.history.replaceState(window.history.state, "", address);
      }
      document.title = element.contentDocument?.title || document.title;
    };
    element.addEventListener("load", followed);
    return () => element.removeEventListener("load", followed);
  }, []);
  return React.createElement("iframe", {
    ref: frame,
    src: src.current,
    sandbox: SANDBOX,
    title: "Foodtaster batches",
    style: { border: "none", display: "block", width: "100%", height: "100%" },
  });
}

globalThis["Foodtaster batches"] = FoodtasterBatches;
globalThis.AirflowPlugin = FoodtasterBatches;
