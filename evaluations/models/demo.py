"""The built-in demo catalog."""

from django.db import models


class DemoProduct(models.Model):
    """One product of the built-in demo catalog that /demo/search ranks (evaluations.demo)."""

    sku = models.CharField(max_length=20, unique=True)
    title = models.CharField(max_length=200)
    description = models.TextField()
    category = models.CharField(max_length=60)
    brand = models.CharField(max_length=60)
    price = models.DecimalField(max_digits=8, decimal_places=2)
    color = models.CharField(max_length=20)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return self.title
