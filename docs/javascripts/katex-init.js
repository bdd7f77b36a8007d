// Typesets the formulas pymdownx.arithmatex marked (generic mode): inline \( ... \) and
// display \[ ... \], inside elements of class "arithmatex". KaTeX itself comes from
// Debian's libjs-katex, copied into the site at build time (mkdocs_hooks.py).
(function () {
  function typeset() {
    document.querySelectorAll(".arithmatex").forEach(function (element) {
      renderMathInElement(element, {
        delimiters: [
          { left: "\\(", right: "\\)", display: false },
          { left: "\\[", right: "\\]", display: true },
        ],
        throwOnError: false,
      });
    });
  }
  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", typeset);
  } else {
    typeset();
  }
})();
